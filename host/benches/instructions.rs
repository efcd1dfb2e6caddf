//! What the orchestrator adds to a decision, counted in instructions rather than time, around
//! a native strategy and around a WebAssembly one. Time alone cannot tell work the host adds
//! from the same work running slower after a call into the sandbox; an instruction count can.
//! Each case runs in a process of its own under valgrind's callgrind, twice (1 000 and 21 000
//! decisions or bare calls), and the difference of the two counts over 20 000 is the count of
//! one; what the orchestrator adds is a decision's count minus a bare call's.
//! Run: `./scripts/build-guests.sh && env -u RUST_BACKTRACE cargo bench -p rebound-core --bench
//! instructions` (needs `valgrind`).

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rebound::backoff::ExponentialBackoff;
use rebound::wasm::{PolicyPre, PoolConfig, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::{reasons, BestEffort, DecisionContext, Orchestrator, Request, RequestType};
use rebound::{RetryStrategy, SyncStrategy};

/// The variable that tells a process it is one case (`STRATEGY,ASK,COUNT`).
const CASE: &str = "REBOUND_INSTRUCTIONS_CASE";
/// The two counts each case runs.
const COUNTS: [u64; 2] = [1_000, 21_000];

fn main() {
    match std::env::var(CASE) {
        Ok(case) => run_case(&case),
        Err(_) => print_table(),
    }
}

/// One case: `count` decisions through the orchestrator (`decide`) or bare calls of the
/// strategy (`call`), native best effort or the Rust best-effort component (`wasm`).
fn run_case(case: &str) {
    let [strategy, ask, count] = case.split(',').collect::<Vec<_>>()[..] else {
        panic!("{CASE}: expected STRATEGY,ASK,COUNT, got {case}");
    };
    let count: u64 = count.parse().expect("a count");
    // One pooled instance: valgrind cannot map the default pool's reservation.
    let pool = PoolConfig::new(1, PoolConfig::default().idle_per_policy);
    let runtime = WasmRuntime::with_pool(64 << 20, Default::default(), pool).expect("engine");
    let (decider, caller): (Arc<dyn RetryStrategy>, Arc<dyn SyncStrategy>) = match strategy {
        "wasm" => {
            let path =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/guests/best_effort.wasm");
            let bytes = std::fs::read(&path).unwrap_or_else(|e| {
                panic!("{}: {e}; run ./scripts/build-guests.sh", path.display())
            });
            let component = PolicyPre::load(&runtime, "best_effort", &bytes).unwrap();
            let wasm = WasmStrategy::new(component, WasmStrategyConfig::default()).unwrap();
            let wasm = Arc::new(wasm);
            (wasm.clone(), wasm)
        }
        _ => {
            let native = Arc::new(BestEffort::<ExponentialBackoff>::default());
            (native.clone(), native)
        }
    };
    let orchestrator = Orchestrator::new(decider);
    let template = Request::new(1, RequestType::Get, Duration::from_secs(3600)).unwrap();
    for _ in 0..count {
        let mut request = template.clone();
        let context = DecisionContext::new(&reasons::KV_LOCKED);
        if ask == "decide" {
            black_box(
                orchestrator
                    .decide(&mut request, &context)
                    .into_ready()
                    .ok(),
            );
        } else {
            let _ = black_box(caller.answer(black_box(&request), &context));
        }
    }
}

/// The instructions callgrind counts for `case`, run `count` times in a process of its own.
fn instructions(case: &str, count: u64) -> u64 {
    let me = std::env::current_exe().expect("this bench's path");
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(me)
        .env(CASE, format!("{case},{count}"))
        .output()
        .expect("valgrind (install it: apt-get install valgrind)");
    let report = String::from_utf8_lossy(&out.stderr);
    let collected = report.lines().find_map(|line| {
        let (_, n) = line.split_once("Collected : ")?;
        n.trim().parse().ok()
    });
    collected.unwrap_or_else(|| panic!("no count from callgrind for {case}:\n{report}"))
}

/// The instructions of one run of `case`: the difference of its two counts.
fn per_run(case: &str) -> f64 {
    let [few, many] = COUNTS.map(|count| instructions(case, count));
    (many as f64 - few as f64) / (COUNTS[1] - COUNTS[0]) as f64
}

fn print_table() {
    println!("| strategy | decision | bare call | the orchestrator adds |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, strategy) in [("native best effort", "native"), ("Rust component", "wasm")] {
        let decision = per_run(&format!("{strategy},decide"));
        let call = per_run(&format!("{strategy},call"));
        println!(
            "| {name} | {decision:.0} | {call:.0} | {:.0} |",
            decision - call
        );
    }
}
