//! Decision latency through the orchestrator — native BestEffort, the WASM best-effort policy,
//! and a bare no-op export with the same signature — plus compile and instantiate costs, all
//! in one run, printed as a table with ratios. Run: `./scripts/build-guests.sh && cargo bench
//! -p rebound --bench decision`.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use rebound::budget::RetryBudgets;
use rebound::wasm::{PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::DecisionContext;
use rebound::{
    reasons, BestEffort, Decision, Orchestrator, Request, RequestType, RetryStrategy, SyncStrategy,
};

#[path = "support/measure.rs"]
mod measure;
use measure::measure;

fn guest(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../build/guests/{name}.wasm"))
}

fn decision_latency(strategy: Arc<dyn RetryStrategy>) -> Duration {
    let orchestrator = Orchestrator::new(strategy);
    let template = Request::new(1, RequestType::Get, Duration::from_secs(3600)).unwrap();
    let reason = reasons::KV_LOCKED;
    measure(15, 20_000, || {
        let mut request = template.clone();
        let decision = orchestrator
            .maybe_retry(&mut request, &reason)
            .now_or_never()
            .expect("synchronous strategy");
        black_box(matches!(decision, Decision::Retry(_) | Decision::Fail(_)));
    })
}

fn strategy_latency(strategy: &dyn SyncStrategy) -> Duration {
    let request = Request::new(1, RequestType::Get, Duration::from_secs(3600)).unwrap();
    let reason = reasons::KV_LOCKED;
    measure(15, 20_000, || {
        let _ = black_box(strategy.decide(black_box(&request), &DecisionContext::new(&reason)));
    })
}

fn main() {
    let runtime = WasmRuntime::new(64 << 20).expect("engine");
    let budgets = Arc::new(RetryBudgets::new());
    let load = |name: &str| {
        let bytes = std::fs::read(guest(name))
            .unwrap_or_else(|e| panic!("{name}: {e}; run ./scripts/build-guests.sh"));
        PolicyPre::load(&runtime, name, &bytes).unwrap()
    };
    let wasm = |name: &str| {
        Arc::new(
            WasmStrategy::new(
                load(name),
                WasmStrategyConfig::default(),
                Arc::clone(&budgets),
            )
            .unwrap(),
        )
    };

    let extra: Vec<(String, Duration, Duration)> = std::env::var("REBOUND_BENCH_EXTRA")
        .unwrap_or_default()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|path| {
            let bytes = std::fs::read(path).unwrap();
            let c = PolicyPre::load(&runtime, "extra", &bytes).unwrap();
            let s = Arc::new(
                WasmStrategy::new(c, WasmStrategyConfig::default(), Arc::clone(&budgets)).unwrap(),
            );
            (
                path.to_owned(),
                decision_latency(s.clone()),
                strategy_latency(s.as_ref()),
            )
        })
        .collect();
    for (path, d, c) in &extra {
        println!(
            "EXTRA {path}: decision {:.0} ns, call {:.0} ns",
            d.as_nanos() as f64,
            c.as_nanos() as f64
        );
    }
    let native_strategy = Arc::new(BestEffort::<rebound::backoff::ExponentialBackoff>::default());
    let (noop_strategy, best_effort_strategy) = (wasm("noop"), wasm("best_effort"));
    let native = decision_latency(native_strategy.clone());
    let noop = decision_latency(noop_strategy.clone());
    let best_effort = decision_latency(best_effort_strategy.clone());
    let native_call = strategy_latency(native_strategy.as_ref());
    let noop_call = strategy_latency(noop_strategy.as_ref());
    let best_effort_call = strategy_latency(best_effort_strategy.as_ref());

    let bytes = std::fs::read(guest("best_effort")).unwrap();
    let compile = measure(5, 3, || {
        black_box(PolicyPre::load(&runtime, "best_effort", &bytes).unwrap());
    });
    let component = load("best_effort");
    let instantiate = measure(9, 200, || {
        black_box(
            WasmStrategy::new(
                component.clone(),
                WasmStrategyConfig::default(),
                Arc::clone(&budgets),
            )
            .unwrap(),
        );
    });

    let ns = |d: Duration| d.as_nanos() as f64;
    println!(
        "RUST_BACKTRACE={}",
        std::env::var("RUST_BACKTRACE").unwrap_or_else(|_| "unset".into())
    );
    println!();
    println!("| measurement | time | ratio |");
    println!("| --- | ---: | ---: |");
    println!(
        "| decision, native BestEffort (orchestrator) | {:.0} ns | 1.00× native |",
        ns(native)
    );
    println!(
        "| decision, WASM no-op export (orchestrator) | {:.0} ns | {:.2}× native |",
        ns(noop),
        ns(noop) / ns(native)
    );
    println!(
        "| decision, WASM best-effort policy (orchestrator) | {:.0} ns | {:.2}× no-op floor |",
        ns(best_effort),
        ns(best_effort) / ns(noop)
    );
    println!(
        "| strategy call only, native BestEffort | {:.0} ns | |",
        ns(native_call)
    );
    println!(
        "| strategy call only, WASM no-op export (the bare-call floor) | {:.0} ns | |",
        ns(noop_call)
    );
    println!(
        "| strategy call only, WASM best-effort policy | {:.0} ns | {:.2}× floor |",
        ns(best_effort_call),
        ns(best_effort_call) / ns(noop_call)
    );
    println!(
        "| instantiate + configure (pooling, pre-instantiated) | {:.1} µs | |",
        ns(instantiate) / 1e3
    );
    println!(
        "| compile + check component (best_effort, {} KB) | {:.2} ms | |",
        bytes.len() / 1024,
        ns(compile) / 1e6
    );
}
