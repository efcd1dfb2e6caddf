//! Policies per language, printed as one table from one run: the warm
//! decision latency of the three example policies of Rust, Python, JavaScript (on SpiderMonkey
//! and on QuickJS), C and Zig — best-effort (the `best-effort` answer, decided by the host; the
//! Rust one computes it in the guest), no-retry-for-robots (one `failure.client-context` read,
//! then best effort) and cassandra-default (decided in the guest) — beside the native
//! strategies; the empty call (a test guest answering a constant retry without reading the
//! request or the reason: what crossing into the language costs); and per language the
//! component's size, its compile time, the load of its compiled artifact from the cache, and
//! the creation of one configured instance.
//!
//! Run: `./scripts/build-guests.sh && cargo bench -p rebound-core --bench languages`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rebound::cassandra::ConsistencyLevel;
use rebound::cassandra::{Cassandra, DefaultRetryPolicy};
use rebound::wasm::{ArtifactCache, PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::DecisionContext;
use rebound::ReadTimeout;
use rebound::{reasons, BestEffort, Request, RequestType, RetryReason, SyncStrategy};

#[path = "support/measure.rs"]
mod measure;
use measure::measure;

fn guest(name: &str) -> Vec<u8> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../build/guests/{name}.wasm"));
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run ./scripts/build-guests.sh", path.display()))
}

/// Warm latency of one decision of `strategy` for `request` failing with `reason`.
fn decision(strategy: &dyn SyncStrategy, request: &Request, reason: &RetryReason) -> Duration {
    measure(11, 5_000, || {
        let _ = black_box(strategy.answer(black_box(request), &DecisionContext::new(reason)));
    })
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

struct Inputs {
    get: Request,
    cql: Request,
    locked: RetryReason,
    read_timeout: RetryReason,
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // `cargo test --benches` smoke-runs bench targets: nothing to check here
    }
    let runtime = WasmRuntime::new(64 << 20).expect("engine");
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::open(cache_dir.path(), runtime.engine()).unwrap();
    let hour = Duration::from_secs(3600);
    let inputs = Inputs {
        get: Request::new(1, RequestType::Get, hour).unwrap(),
        cql: Request::new(1, RequestType::Cql, hour)
            .unwrap()
            .with_idempotent(true),
        locked: reasons::KV_LOCKED,
        read_timeout: ReadTimeout {
            consistency: ConsistencyLevel::Quorum,
            block_for: 2,
            received: 2,
            data_present: false,
        }
        .into(),
    };

    let native_best = decision(
        &BestEffort::<rebound::backoff::ExponentialBackoff>::default(),
        &inputs.get,
        &inputs.locked,
    );
    let native_cassandra = decision(
        &Cassandra::new(DefaultRetryPolicy),
        &inputs.cql,
        &inputs.read_timeout,
    );

    println!(
        "\nPolicies per language (wasmtime 48.0.8, one instance, warm; RUST_BACKTRACE={})",
        std::env::var("RUST_BACKTRACE").unwrap_or_else(|_| "unset".into())
    );
    println!("| language | component KB | compile ms | cached load ms | instance ms | empty call µs | best-effort µs | × native | robots µs | cassandra-default µs | × native |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| native Rust | – | – | – | – | – | {} | 1.0 | – | {} | 1.0 |",
        us(native_best),
        us(native_cassandra)
    );
    // (language, guest prefix, whether it has a `noop` test guest)
    for (language, prefix, has_noop) in [
        ("Rust", "", true),
        ("Python", "python_", true),
        ("JavaScript (SpiderMonkey)", "javascript_", true),
        ("JavaScript (QuickJS)", "quickjs_", true),
        ("C", "c_", false),
        ("Zig", "zig_", false),
    ] {
        let best_bytes = guest(&format!("{prefix}best_effort"));
        let name = format!("{prefix}best_effort");
        let started = Instant::now();
        let component = PolicyPre::load_cached(&runtime, &name, &best_bytes, Some(&cache)).unwrap();
        let compile = started.elapsed();
        let started = Instant::now();
        black_box(PolicyPre::load_cached(&runtime, &name, &best_bytes, Some(&cache)).unwrap());
        let cached = started.elapsed();
        let started = Instant::now();
        let best = WasmStrategy::new(component, WasmStrategyConfig::default()).unwrap();
        let instance = started.elapsed();

        // A warm instance of guest `{prefix}{policy}`.
        let warm = |policy: &str| {
            let name = format!("{prefix}{policy}");
            WasmStrategy::new(
                PolicyPre::load_cached(&runtime, &name, &guest(&name), Some(&cache)).unwrap(),
                WasmStrategyConfig::default(),
            )
            .unwrap()
        };
        let empty_call = has_noop.then(|| decision(&warm("noop"), &inputs.get, &inputs.locked));
        let robots = warm("no_retry_for_robots");
        let cassandra = warm("cassandra_default");

        let best_latency = decision(&best, &inputs.get, &inputs.locked);
        let robots_latency = decision(&robots, &inputs.get, &inputs.locked);
        let cassandra_latency = decision(&cassandra, &inputs.cql, &inputs.read_timeout);
        for strategy in [&best, &robots, &cassandra] {
            assert_eq!(
                strategy.stats().failures.values().sum::<u64>(),
                0,
                "{language}: {:?}",
                strategy.stats()
            );
        }
        println!(
            "| {language} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {} | {:.0} |",
            best_bytes.len() / 1024,
            ms(compile),
            ms(cached),
            ms(instance),
            empty_call.map_or_else(|| "–".to_owned(), us),
            us(best_latency),
            best_latency.as_secs_f64() / native_best.as_secs_f64(),
            us(robots_latency),
            us(cassandra_latency),
            cassandra_latency.as_secs_f64() / native_cassandra.as_secs_f64(),
        );
    }
}
