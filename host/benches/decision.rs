//! Decision latency through the orchestrator — native BestEffort, a bare no-op export with the
//! world's signature (the floor), and the best-effort policy in Rust (with the reference's
//! parameters, and tuned so that it computes in the policy), C and Zig, each taken with
//! `Deciding::into_ready` as a synchronous caller takes it; the native one again at a moment
//! the caller fixes, taken by a poll, and for a cancellation — then the bare strategy calls,
//! the no-op called by wasmtime alone, the copy of the request each decision starts from,
//! compile and instantiate costs, printed as a table with ratios.
//! The latencies are measured interleaved, round by round, so every row of one run sees the
//! same machine.
//! Run: `./scripts/build-guests.sh && env -u RUST_BACKTRACE cargo bench -p rebound-core --bench
//! decision`. `REBOUND_BENCH_EXTRA=a.wasm,b.wasm` adds rows for other components.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use rebound::grpc::{GrpcCode, ServiceConfig};
use rebound::wasm::{PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::DecisionContext;
use rebound::{
    reasons, BestEffort, Decision, Orchestrator, Request, RequestType, RetryStrategy, SyncStrategy,
};
use rebound::{GrpcRetry, HttpMethod, HttpRetry, RetryReason};

#[path = "support/measure.rs"]
mod measure;
use measure::{measure, measure_interleaved};

/// The current WIT world, for calling a component with wasmtime alone.
mod bare {
    wasmtime::component::bindgen!({ path: "../wit", world: "retry-policy" });
}

/// wasmtime alone: the no-op component instantiated in a plain store of `runtime`'s engine
/// (its imports trap; the no-op calls none), fuel and epoch deadline set once, and a function
/// that makes one typed call of `retry-after` — no pool, no call state, no answer checked.
fn bare_call(runtime: &WasmRuntime, bytes: &[u8]) -> impl FnMut() {
    use wasmtime::component::{Component, Linker};
    let engine = runtime.engine();
    let component = Component::new(engine, bytes).expect("the no-op compiles");
    let mut linker = Linker::<()>::new(engine);
    linker
        .define_unknown_imports_as_traps(&component)
        .expect("imports");
    let mut store = wasmtime::Store::new(engine, ());
    store.set_fuel(u64::MAX).expect("fuel");
    store.set_epoch_deadline(u64::MAX / 2);
    let policy = bare::RetryPolicy::instantiate(&mut store, &component, &linker).expect("instance");
    let reason = bare::rebound::policy::types::RetryReason::KvLocked;
    move || {
        black_box(
            policy
                .rebound_policy_strategy()
                .call_retry_after(&mut store, black_box(&reason))
                .expect("the no-op answers"),
        );
    }
}

fn guest(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../build/guests/{name}.wasm"))
}

/// One decision for a fresh copy of `template`, which `ask` asks the orchestrator for and takes
/// (`None`: the strategy did not answer at once).
fn decide(template: &Request, ask: impl FnOnce(&mut Request) -> Option<Decision>) {
    let mut request = template.clone();
    let decision = ask(&mut request).expect("synchronous strategy");
    black_box(matches!(decision, Decision::Retry(_) | Decision::Fail(_)));
}

/// A decision for KV_LOCKED taken as a synchronous caller takes it.
fn kv_locked(orchestrator: &Orchestrator, template: &Request) {
    decide(template, |request| {
        (orchestrator.decide(request, &DecisionContext::new(&reasons::KV_LOCKED)))
            .into_ready()
            .ok()
    });
}

/// One bare call of `strategy`.
fn call(strategy: &dyn SyncStrategy, request: &Request) {
    let _ = black_box(strategy.answer(
        black_box(request),
        &DecisionContext::new(&reasons::KV_LOCKED),
    ));
}

/// A strategy as the orchestrator takes it and as a bare call takes it.
type Both = (Arc<dyn RetryStrategy>, Arc<dyn SyncStrategy>);

fn both<S: SyncStrategy + 'static>(strategy: Arc<S>) -> Both {
    (strategy.clone(), strategy)
}

fn main() {
    let runtime = WasmRuntime::new(64 << 20).expect("engine");
    let load_with = |name: &str, path: &PathBuf, params: &[(&str, &str)]| {
        let bytes = std::fs::read(path)
            .unwrap_or_else(|e| panic!("{}: {e}; run ./scripts/build-guests.sh", path.display()));
        let component = PolicyPre::load(&runtime, name, &bytes).unwrap();
        let config = WasmStrategyConfig::default().with_params(params.iter().copied());
        both(Arc::new(WasmStrategy::new(component, config).unwrap()))
    };
    let load_path = |name: &str, path: &PathBuf| load_with(name, path, &[]);
    let wasm = |name: &str| load_path(name, &guest(name));

    let native = Arc::new(BestEffort::<rebound::backoff::ExponentialBackoff>::default());
    let mut strategies: Vec<(String, Both)> = vec![
        ("native BestEffort".into(), both(native)),
        ("WASM no-op export (the floor)".into(), wasm("noop")),
        ("WASM best-effort, Rust".into(), wasm("best_effort")),
        (
            "WASM best-effort, Rust, tuned (min_ms 2: computes in the policy)".into(),
            load_with("best_effort", &guest("best_effort"), &[("min_ms", "2")]),
        ),
        ("WASM best-effort, C".into(), wasm("c_best_effort")),
        ("WASM best-effort, Zig".into(), wasm("zig_best_effort")),
        (
            "WASM best-effort, a component importing WASI 0.3 (its own engine, called on a fiber)"
                .into(),
            wasm("wasi_p3_probe"),
        ),
    ];
    for path in std::env::var("REBOUND_BENCH_EXTRA")
        .unwrap_or_default()
        .split(',')
        .filter(|p| !p.is_empty())
    {
        strategies.push((path.to_owned(), load_path("extra", &PathBuf::from(path))));
    }

    let template = Request::new(1, RequestType::Get, Duration::from_secs(3600)).unwrap();
    let orchestrators: Vec<Orchestrator> = strategies
        .iter()
        .map(|(_, (s, _))| Orchestrator::new(Arc::clone(s)))
        .collect();
    let mut deciders: Vec<Box<dyn FnMut()>> = orchestrators
        .iter()
        .map(|o| Box::new(|| kv_locked(o, &template)) as Box<dyn FnMut()>)
        .collect();
    let mut callers: Vec<Box<dyn FnMut()>> = strategies
        .iter()
        .map(|(_, (_, s))| Box::new(|| call(s.as_ref(), &template)) as Box<dyn FnMut()>)
        .collect();
    // Each decision above starts from a fresh copy of the request; this row is that copy
    // alone, so that a decision's own cost can be told from the bench's setup.
    let mut copy = || drop(black_box(template.clone()));
    let native = &orchestrators[0];
    // The native decision again, with the moment fixed by the caller (no clock read).
    let mut native_at_start = || {
        decide(&template, |request| {
            (native.decide(
                request,
                &DecisionContext::new(&reasons::KV_LOCKED).at(template.start()),
            ))
            .into_ready()
            .ok()
        })
    };
    // The native decision again, taken by polling the future once instead.
    let mut native_polled = || {
        decide(&template, |request| {
            native
                .decide(request, &DecisionContext::new(&reasons::KV_LOCKED))
                .now_or_never()
        })
    };
    // A native cancellation: a dispatched upsert whose socket closed in flight is not retried
    // (reference 001: not idempotent, and the reason does not allow it), so the decision builds
    // the error context.
    let mut upsert = Request::new(2, RequestType::Upsert, Duration::from_secs(3600)).unwrap();
    upsert.mark_dispatched("10.0.0.1:11210");
    let mut native_cancel = || {
        decide(&upsert, |request| {
            (native.decide(
                request,
                &DecisionContext::new(&reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT),
            ))
            .into_ready()
            .ok()
        })
    };
    // The HTTP and gRPC built-ins against best effort, on the same request and failure: a sent
    // GET answered 503, a sent idempotent gRPC call answered UNAVAILABLE.
    let mut http_get = Request::new(3, RequestType::Http, Duration::from_secs(3600))
        .unwrap()
        .with_method(HttpMethod::Get)
        .with_authority("api.example.com")
        .with_route("/v1/items");
    http_get.mark_dispatched("10.0.0.2:443");
    let mut grpc_call = Request::new(4, RequestType::Grpc, Duration::from_secs(3600))
        .unwrap()
        .with_route("/shop.Inventory/Get")
        .with_idempotent(true);
    grpc_call.mark_dispatched("10.0.0.3:443");
    let service_config = serde_json::json!({"methodConfig": [{
        "name": [{"service": "shop.Inventory"}],
        "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
    }]});
    let grpc_config = ServiceConfig::parse(&service_config, 5).expect("a valid service config");
    let http_builtin = Orchestrator::new(Arc::new(HttpRetry::default()));
    let grpc_builtin = Orchestrator::new(Arc::new(GrpcRetry::new(grpc_config)));
    let status_503 = RetryReason::HttpStatus(503);
    let unavailable = RetryReason::GrpcStatus(GrpcCode::Unavailable);
    let on = |orchestrator: &Orchestrator, template: &Request, reason: &RetryReason| {
        decide(template, |request| {
            (orchestrator.decide(request, &DecisionContext::new(reason)))
                .into_ready()
                .ok()
        })
    };
    let mut http_best_effort = || on(native, &http_get, &status_503);
    let mut http_by_builtin = || on(&http_builtin, &http_get, &status_503);
    let mut grpc_best_effort = || on(native, &grpc_call, &unavailable);
    let mut grpc_by_builtin = || on(&grpc_builtin, &grpc_call, &unavailable);
    let noop_bytes = std::fs::read(guest("noop")).expect("the no-op guest");
    let mut wasmtime_alone = bare_call(&runtime, &noop_bytes);
    let mut all: Vec<&mut dyn FnMut()> = deciders
        .iter_mut()
        .chain(callers.iter_mut())
        .map(|f| &mut **f as &mut dyn FnMut())
        .chain([
            &mut copy as &mut dyn FnMut(),
            &mut native_at_start as &mut dyn FnMut(),
            &mut native_polled as &mut dyn FnMut(),
            &mut wasmtime_alone as &mut dyn FnMut(),
            &mut native_cancel as &mut dyn FnMut(),
            &mut http_best_effort as &mut dyn FnMut(),
            &mut http_by_builtin as &mut dyn FnMut(),
            &mut grpc_best_effort as &mut dyn FnMut(),
            &mut grpc_by_builtin as &mut dyn FnMut(),
        ])
        .collect();
    let times = measure_interleaved(41, 10_000, &mut all);
    let (decisions, rest) = times.split_at(strategies.len());
    let (calls, rest) = rest.split_at(strategies.len());
    let [copy, native_at_start, native_polled, wasmtime_alone, native_cancel, http_best_effort, http_by_builtin, grpc_best_effort, grpc_by_builtin] =
        rest
    else {
        unreachable!("one time per row")
    };

    let bytes = std::fs::read(guest("best_effort")).unwrap();
    let compile = measure(5, 3, || {
        black_box(PolicyPre::load(&runtime, "best_effort", &bytes).unwrap());
    });
    let component = PolicyPre::load(&runtime, "best_effort", &bytes).unwrap();
    let instantiate = measure(9, 200, || {
        black_box(WasmStrategy::new(component.clone(), WasmStrategyConfig::default()).unwrap());
    });

    let ns = |d: Duration| d.as_nanos() as f64;
    println!(
        "RUST_BACKTRACE={}",
        std::env::var("RUST_BACKTRACE").unwrap_or_else(|_| "unset".into())
    );
    println!();
    println!("| measurement | time | ratio |");
    println!("| --- | ---: | ---: |");
    for (i, ((name, _), time)) in strategies.iter().zip(decisions).enumerate() {
        let ratio = match i {
            0 => "1.00× native".to_owned(),
            1 => format!("{:.2}× native", ns(*time) / ns(decisions[0])),
            _ => format!("{:.2}× floor", ns(*time) / ns(decisions[1])),
        };
        println!(
            "| decision (orchestrator), {name} | {:.0} ns | {ratio} |",
            ns(*time)
        );
    }
    println!(
        "| decision (orchestrator), native BestEffort, the moment fixed by the caller (no clock read) | {:.0} ns | {:.2}× native |",
        ns(*native_at_start),
        ns(*native_at_start) / ns(decisions[0])
    );
    println!(
        "| decision (orchestrator), native BestEffort, taken by a poll (`now_or_never`) | {:.0} ns | {:.2}× native |",
        ns(*native_polled),
        ns(*native_polled) / ns(decisions[0])
    );
    println!(
        "| decision (orchestrator), native BestEffort, a cancellation (builds the error context) | {:.0} ns | {:.2}× native |",
        ns(*native_cancel),
        ns(*native_cancel) / ns(decisions[0])
    );
    println!(
        "| copying the request (each decision row's setup, included above) | {:.0} ns | |",
        ns(*copy)
    );
    for (what, best_effort, builtin) in [
        (
            "an HTTP GET answered 503",
            http_best_effort,
            http_by_builtin,
        ),
        (
            "a gRPC call answered UNAVAILABLE",
            grpc_best_effort,
            grpc_by_builtin,
        ),
    ] {
        println!(
            "| decision (orchestrator), {what}, native BestEffort | {:.0} ns | |",
            ns(*best_effort)
        );
        let builtin_name = if what.contains("HTTP") {
            "http"
        } else {
            "grpc"
        };
        println!(
            "| decision (orchestrator), {what}, the `{builtin_name}` built-in | {:.0} ns | {:.2}× best effort |",
            ns(*builtin),
            ns(*builtin) / ns(*best_effort)
        );
    }
    for (i, ((name, _), time)) in strategies.iter().zip(calls).enumerate() {
        let ratio = match i {
            0 | 1 => String::new(),
            _ => format!("{:.2}× floor", ns(*time) / ns(calls[1])),
        };
        println!(
            "| strategy call only, {name} | {:.0} ns | {ratio} |",
            ns(*time)
        );
    }
    println!(
        "| wasmtime alone: a typed call of the no-op's `retry-after` in a plain store | {:.0} ns | {:.2}× the floor's call |",
        ns(*wasmtime_alone),
        ns(*wasmtime_alone) / ns(calls[1])
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
