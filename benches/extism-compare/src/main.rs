//! The best-effort decision through Rebound's orchestrator, made by the Rust component policy
//! (`build/guests/best_effort.wasm`, component model) — as shipped, answering the host's best
//! effort, and configured so that it computes the delay in the sandbox — and by the same
//! decision as an Extism plugin (`build/guests/extism_best_effort.wasm`, bytes in and out,
//! computing), interleaved round by round in one process. The inputs alternate a retry (an idempotent get, KV_LOCKED) and a
//! cancellation (a dispatched upsert whose socket closed in flight: RequestCanceled with its
//! error context), so both paths build the same decisions.
//!
//! Run: `./scripts/build-guests.sh && cd benches/extism-compare && env -u RUST_BACKTRACE
//! cargo run --release`.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::wasm::{PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::{
    reasons, Decision, DecisionContext, Orchestrator, PolicyFailureKind, Request, RequestType,
    RetryAction, RetryReason, SyncStrategy,
};

#[path = "../../../host/benches/support/measure.rs"]
mod measure;

fn guest(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../build/guests/{name}.wasm"))
}

fn read(name: &str) -> Vec<u8> {
    let path = guest(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run ./scripts/build-guests.sh", path.display()))
}

/// A strategy whose decision an Extism plugin makes: the request's idempotency, its retry
/// attempts and the reason's name go in as bytes, the delay (or -1: no retry) comes out.
#[derive(Debug)]
struct ExtismStrategy(Mutex<extism::Plugin>);

impl rebound::Strategy for ExtismStrategy {
    fn name(&self) -> &str {
        "extism-best-effort"
    }
}

impl SyncStrategy for ExtismStrategy {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let mut input = Vec::with_capacity(48);
        input.push(u8::from(request.is_idempotent()));
        input.extend(request.retry_attempts().to_le_bytes());
        input.extend(context.reason().name().as_bytes());
        let mut plugin = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let answer = plugin
            .call::<&[u8], &[u8]>("decide", &input)
            .ok()
            .and_then(|out| <[u8; 8]>::try_from(out).ok())
            .map(i64::from_le_bytes);
        match answer {
            Some(ms) if ms >= 0 => RetryAction::after(Duration::from_millis(ms as u64)),
            Some(_) => RetryAction::NoRetry,
            None => RetryAction::PolicyFailed(PolicyFailureKind::Trap),
        }
    }
}

/// The two inputs, alternated.
fn inputs() -> [(Request, RetryReason); 2] {
    let get = Request::new(1, RequestType::Get, Duration::from_secs(3600)).unwrap();
    let mut upsert = Request::new(2, RequestType::Upsert, Duration::from_secs(3600)).unwrap();
    upsert.mark_dispatched("10.0.0.1:11210");
    [
        (get, reasons::KV_LOCKED),
        (upsert, reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT),
    ]
}

fn decide(orchestrator: &Orchestrator, (template, reason): &(Request, RetryReason)) -> Decision {
    let mut request = template.clone();
    orchestrator
        .decide(&mut request, &DecisionContext::new(reason))
        .into_ready()
        .expect("synchronous strategy")
}

/// Decides the two inputs in turn through `orchestrator`, one per call.
fn alternating<'a>(
    orchestrator: &'a Orchestrator,
    inputs: &'a [(Request, RetryReason); 2],
) -> impl FnMut() + 'a {
    let mut i = 0;
    move || {
        i += 1;
        let _ = black_box(decide(orchestrator, &inputs[i % 2]));
    }
}

/// A decision without its timings.
fn summary(decision: &Decision) -> String {
    match decision {
        Decision::Retry(plan) => format!("retry after {:?} on {:?}", plan.delay, plan.node),
        Decision::Fail(error) => format!("{} ({:?})", error.name(), error.context().reason),
        other => format!("{other:?}"),
    }
}

fn main() {
    let runtime = WasmRuntime::new(64 << 20).expect("engine");
    let component = PolicyPre::load(&runtime, "best_effort", &read("best_effort")).unwrap();
    // As shipped, with the reference's parameters, the policy answers the host's own best
    // effort without computing.
    let shipped = WasmStrategy::new(component.clone(), WasmStrategyConfig::default()).unwrap();
    // A factor a hair above 2 is not the reference's, so it computes in the sandbox as the
    // plugin does (reading the retry attempts and the server's pushback from the host), with
    // the same whole-millisecond delays (checked below).
    let config = WasmStrategyConfig::default().with_params([("factor", "2.000000000000001")]);
    let computing = WasmStrategy::new(component, config).unwrap();
    let plugin = extism::Plugin::new(read("extism_best_effort"), [], false).expect("extism plugin");
    let extism = ExtismStrategy(Mutex::new(plugin));

    let inputs = inputs();
    let shipped = Orchestrator::new(Arc::new(shipped));
    let computing = Orchestrator::new(Arc::new(computing));
    let extism = Orchestrator::new(Arc::new(extism));
    for input in &inputs {
        let expected = summary(&decide(&extism, input));
        for orchestrator in [&shipped, &computing] {
            let decided = summary(&decide(orchestrator, input));
            assert_eq!(decided, expected, "the same decision as the plugin's");
        }
    }
    let (mut a, mut b, mut c) = (
        alternating(&shipped, &inputs),
        alternating(&computing, &inputs),
        alternating(&extism, &inputs),
    );
    let times = measure::measure_interleaved(21, 2_000, &mut [&mut a, &mut b, &mut c]);
    let ns = |d: Duration| d.as_nanos() as f64;
    println!(
        "RUST_BACKTRACE={}",
        std::env::var("RUST_BACKTRACE").unwrap_or_else(|_| "unset".into())
    );
    println!();
    println!("| decision through the orchestrator (retries and cancellations alternated) | time | ratio |");
    println!("| --- | ---: | ---: |");
    println!(
        "| component-model policy (Rust best effort, as shipped: answers the host's best effort) | {:.0} ns | Extism {:.1}× slower |",
        ns(times[0]),
        ns(times[2]) / ns(times[0])
    );
    println!(
        "| component-model policy (Rust best effort, computing in the sandbox) | {:.0} ns | Extism {:.1}× slower |",
        ns(times[1]),
        ns(times[2]) / ns(times[1])
    );
    println!(
        "| Extism plugin (Rust PDK, bytes, computing), same decision | {:.0} ns | |",
        ns(times[2])
    );
}
