//! What a hedge decision costs beside a retry decision, for the `grpc` built-in: a retry
//! decision for a sent, idempotent call answered UNAVAILABLE (its `retryPolicy`, through the
//! orchestrator, with the copy of the request it starts from), and the hedging decisions of the
//! same call under a `hedgingPolicy` (the schedule started as the first copy goes: the policy
//! asked when the next copy is due; then a copy's UNAVAILABLE decided: fatal or not, and the
//! policy asked again), measured interleaved in one run and printed as a table with ratios.
//! Then the same two decisions by a WebAssembly policy (`hedge_echo`, built by
//! `scripts/build-guests.sh`): its `retry-after` through the orchestrator, and its
//! `hedging.next-copy` as the schedule starts. Last, what hedge delays from observed latency
//! cost: recording an answered attempt's latency, reading a percentile, and the hedge decision
//! of a quantile speculative execution beside a constant one.
//! Run: `env -u RUST_BACKTRACE cargo bench -p rebound-core --bench hedge`.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::grpc::{GrpcCode, ServiceConfig};
use rebound::hedge::{
    ConstantSpeculativeExecution, HedgeSchedule, Hedging, QuantileDelay,
    QuantileSpeculativeExecution,
};
use rebound::latency::LatencySketches;
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
    latency(now);
    webassembly(&call, &unavailable, now);
}

/// Recording a latency and reading a percentile (16 authorities in turn, each with a
/// snapshot), and the first hedge decision of a quantile speculative execution against a
/// constant one.
fn latency(now: Instant) {
    let sketches = Arc::new(LatencySketches::new(1024));
    let keys: Vec<String> = (0..16).map(|i| format!("10.0.0.{i}:443")).collect();
    for (i, key) in keys.iter().cycle().take(16 * 4096).enumerate() {
        sketches.record(key, Duration::from_micros(2_000 + (i as u64 % 997) * 13));
    }
    let delay = QuantileDelay::new(95.0, Duration::from_millis(1), Duration::from_millis(500))
        .expect("valid");
    let quantile = QuantileSpeculativeExecution::new(delay, 2, Arc::clone(&sketches)).unwrap();
    let constant = ConstantSpeculativeExecution::new(Duration::from_millis(20), 2).unwrap();
    let (by_quantile, by_constant) = (
        Hedging::new(Arc::new(quantile)),
        Hedging::new(Arc::new(constant)),
    );
    let call = Request::new(5, RequestType::Http, Duration::from_secs(3600))
        .unwrap()
        .with_method(rebound::HttpMethod::Get)
        .with_authority(keys[3].as_str());
    let (mut next_record, mut next_read) = (0usize, 0usize);
    let latency = Duration::from_micros(2_345);
    let times = measure_interleaved(
        31,
        200_000,
        &mut [
            &mut || {
                next_record = (next_record + 1) % keys.len();
                sketches.record(black_box(&keys[next_record]), latency);
            },
            &mut || {
                next_read = (next_read + 1) % keys.len();
                black_box(sketches.quantile(black_box(&keys[next_read]), 95.0));
            },
            &mut || {
                let schedule = HedgeSchedule::start(&by_constant, &call, now);
                black_box(schedule.map(|s| s.next_due()));
            },
            &mut || {
                let schedule = HedgeSchedule::start(&by_quantile, &call, now);
                black_box(schedule.map(|s| s.next_due()));
            },
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    println!();
    println!("| delays from observed latency (16 authorities) | ns | against the constant hedge decision |");
    println!("| --- | ---: | ---: |");
    let constant = ns(times[2]);
    for (row, i) in [
        ("record an answered attempt's latency", 0),
        ("read the 95th percentile", 1),
        ("hedge decision, constant delay (`delay_ms`)", 2),
        ("hedge decision, quantile delay (`percentile = 95`)", 3),
    ] {
        let t = ns(times[i]);
        println!("| {row} | {t:.0} | {:.2} |", t / constant);
    }
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
