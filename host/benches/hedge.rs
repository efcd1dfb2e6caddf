//! What a hedge decision costs beside a retry decision, for the `grpc` built-in: a retry
//! decision for a sent, idempotent call answered UNAVAILABLE (its `retryPolicy`, through the
//! orchestrator, with the copy of the request it starts from), and the hedging decisions of the
//! same call under a `hedgingPolicy` (the schedule started as the first copy goes: the policy
//! asked when the next copy is due; then a copy's UNAVAILABLE decided: fatal or not, and the
//! policy asked again), measured interleaved in one run and printed as a table with ratios.
//! Then the same two decisions by a WebAssembly policy (`hedge_echo`, built by
//! `scripts/build-guests.sh`): its `retry-after` through the orchestrator, and its
//! `hedging.next-copy` as the schedule starts.
//! Run: `env -u RUST_BACKTRACE cargo bench -p rebound --bench hedge`.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::grpc::{GrpcCode, ServiceConfig};
use rebound::hedge::{HedgeSchedule, Hedging};
use rebound::wasm::{PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::{
    DecisionContext, GrpcRetry, Orchestrator, Progress, Request, RequestType, RetryReason,
};
use serde_json::json;

#[path = "support/measure.rs"]
mod measure;
use measure::measure_interleaved;

fn config(policy: &str, body: serde_json::Value) -> ServiceConfig {
    let config = json!({"methodConfig": [{"name": [{"service": "shop.Inventory"}], policy: body}]});
    ServiceConfig::parse(&config, 5).expect("a valid service config")
}

fn main() {
    let retrying = Orchestrator::new(Arc::new(GrpcRetry::new(config(
        "retryPolicy",
        json!({"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}),
    ))));
    let hedging_builtin = GrpcRetry::new(config(
        "hedgingPolicy",
        json!({"maxAttempts": 4, "hedgingDelay": "0.5s", "nonFatalStatusCodes": ["UNAVAILABLE"]}),
    ));
    let hedging = Hedging::new(rebound::Strategy::hedging(&hedging_builtin).expect("it hedges"));
    let mut call = Request::new(4, RequestType::Grpc, Duration::from_secs(3600))
        .unwrap()
        .with_route("/shop.Inventory/Get")
        .with_idempotent(true);
    call.mark_dispatched("10.0.0.3:443");
    let unavailable = RetryReason::GrpcStatus(GrpcCode::Unavailable);
    let now = Instant::now();
    let (rounds, iters) = (31, 200_000);
    let times = measure_interleaved(
        rounds,
        iters,
        &mut [
            &mut || {
                let mut request = call.clone();
                let decided =
                    retrying.decide(&mut request, &DecisionContext::new(&unavailable).at(now));
                black_box(decided.into_ready().is_ok());
            },
            &mut || {
                let request = call.clone();
                let schedule = HedgeSchedule::start(&hedging, &request, now);
                black_box(schedule.map(|s| s.next_due()));
            },
            &mut || {
                let request = call.clone();
                let mut schedule = HedgeSchedule::start(&hedging, &request, now).unwrap();
                black_box(schedule.failed(&request, &unavailable, None, Progress::Processed, now));
            },
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    let retry = ns(times[0]);
    println!("| what (each from a copy of the request) | ns | against the retry decision |");
    println!("| --- | ---: | ---: |");
    println!("| retry decision (`retryPolicy`, UNAVAILABLE) | {retry:.0} | 1.00 |");
    for (row, i) in [
        (
            "hedge decision: the schedule started, the next copy planned",
            1,
        ),
        (
            "hedge decisions: started, then a copy's UNAVAILABLE decided and the next planned",
            2,
        ),
    ] {
        let t = ns(times[i]);
        println!("| {row} | {t:.0} | {:.2} |", t / retry);
    }
    webassembly(&call, &unavailable, now);
}

/// The retry and hedge decisions of `hedge_echo` for `call` answered `reason`.
fn webassembly(call: &Request, reason: &RetryReason, now: Instant) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/guests/hedge_echo.wasm");
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run ./scripts/build-guests.sh", path.display()));
    let runtime = WasmRuntime::new(64 << 20).expect("engine");
    let component = PolicyPre::load(&runtime, "hedge_echo", &bytes).expect("it loads");
    let strategy = Arc::new(
        WasmStrategy::new(component, WasmStrategyConfig::default()).expect("it configures"),
    );
    let hedging = Hedging::new(rebound::Strategy::hedging(&*strategy).expect("it hedges"));
    let orchestrator = Orchestrator::new(strategy);
    let times = measure_interleaved(
        31,
        20_000,
        &mut [
            &mut || {
                let mut request = call.clone();
                let decided =
                    orchestrator.decide(&mut request, &DecisionContext::new(reason).at(now));
                black_box(decided.into_ready().is_ok());
            },
            &mut || {
                let request = call.clone();
                let schedule = HedgeSchedule::start(&hedging, &request, now);
                black_box(schedule.map(|s| s.next_due()));
            },
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    let retry = ns(times[0]);
    println!();
    println!("| a WebAssembly policy (`hedge_echo`, Rust) | ns | against its retry decision |");
    println!("| --- | ---: | ---: |");
    println!("| retry decision (`retry-after`) | {retry:.0} | 1.00 |");
    let hedge = ns(times[1]);
    println!(
        "| hedge decision: the schedule started, `next-copy` asked | {hedge:.0} | {:.2} |",
        hedge / retry
    );
}
