//! What a retry throttle adds to a decision, and what its accounting per outcome costs, on one
//! thread and with two threads on one throttle, measured in one run beside the decision without
//! a throttle and printed as a table; then the latency of decisions on one authority while
//! another thread names new authorities without end, at the largest `max_scopes`.
//! Run (throttles need only the registry, so the bench builds no wasmtime):
//! `env -u RUST_BACKTRACE cargo bench -p rebound-core --no-default-features --features registry --bench throttle`.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use rebound::throttle::{
    AdaptiveConfig, FailureClass, FailureCosts, RetryThrottle, ScopedThrottle, ThrottleConfig,
    ThrottleKind, ThrottleScope,
};
use rebound::{reasons, Decision, DecisionContext, Orchestrator, Request, RequestType};

#[path = "support/measure.rs"]
mod measure;
use measure::{contended, measure_interleaved};

/// Failures that cost nothing, so the throttle keeps allowing retries while every decision
/// still counts its failure.
fn free() -> FailureCosts {
    FailureCosts::new(0.0, 0.0, 0.0, 0.0)
}

fn tokens() -> ThrottleConfig {
    let kind = ThrottleKind::Tokens {
        max_tokens: 1000.0,
        token_ratio: 1.0,
    };
    ThrottleConfig::new(kind).with_costs(free())
}

fn adaptive() -> ThrottleConfig {
    let mut adaptive = AdaptiveConfig::default();
    adaptive.seed = Some(1);
    ThrottleConfig::new(ThrottleKind::Adaptive(adaptive)).with_costs(free())
}

fn scoped(config: ThrottleConfig, scope: ThrottleScope) -> Arc<ScopedThrottle> {
    Arc::new(ScopedThrottle::new(config, scope, 1024, Instant::now()).unwrap())
}

/// One decision of a first failure (KV_LOCKED, retried by best effort) at the request's start.
fn decide(orchestrator: &Orchestrator, template: &Request, throttle: Option<&ScopedThrottle>) {
    let mut request = template.clone();
    let context = DecisionContext::new(&reasons::KV_LOCKED)
        .with_throttle(throttle)
        .at(template.start());
    let decision = orchestrator
        .decide(&mut request, &context)
        .now_or_never()
        .expect("synchronous strategy");
    black_box(matches!(decision, Decision::Retry(_)));
}

fn main() {
    let orchestrator = Orchestrator::default();
    let template = Request::new(1, RequestType::Get, Duration::from_secs(10)).unwrap();
    let mut per_node = template.clone();
    per_node.mark_dispatched("node-1:11210");
    let by_policy = scoped(tokens(), ThrottleScope::Policy);
    let by_node = scoped(tokens(), ThrottleScope::Node);
    let adaptive_throttle = scoped(adaptive(), ThrottleScope::Policy);
    let now = Instant::now();
    let token_count = RetryThrottle::new(tokens(), now).unwrap();
    let window = RetryThrottle::new(adaptive(), now).unwrap();
    let (rounds, iters) = (31, 200_000);
    let times = measure_interleaved(
        rounds,
        iters,
        &mut [
            &mut || decide(&orchestrator, &template, None),
            &mut || decide(&orchestrator, &template, Some(&by_policy)),
            &mut || decide(&orchestrator, &per_node, Some(&by_node)),
            &mut || decide(&orchestrator, &template, Some(&adaptive_throttle)),
            &mut || black_box(&token_count).failed_at(FailureClass::Other, now),
            &mut || black_box(&token_count).succeeded_at(now),
            &mut || black_box(&window).failed_at(FailureClass::Other, now),
            &mut || {
                black_box(black_box(&window).allows_retry_at(now));
            },
        ],
    );
    let two = contended(2, 2_000_000, || {
        black_box(&token_count).failed_at(FailureClass::Other, now)
    });
    let two_adaptive = contended(2, 2_000_000, || {
        black_box(&window).failed_at(FailureClass::Other, now)
    });
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    let bare = ns(times[0]);
    println!("| what | ns per call | added by the throttle (ns) |");
    println!("| --- | ---: | ---: |");
    println!("| decision, no throttle (1 thread) | {bare:.1} | |");
    for (row, i) in [
        ("decision with a token throttle (1 thread)", 1),
        ("decision with a token throttle kept per node (1 thread)", 2),
        ("decision with an adaptive throttle (1 thread)", 3),
    ] {
        println!(
            "| {row} | {:.1} | {:.1} |",
            ns(times[i]),
            ns(times[i]) - bare
        );
    }
    for (row, i) in [
        ("token throttle: a failure counted (1 thread)", 4),
        ("token throttle: a success counted (1 thread)", 5),
        ("adaptive throttle: a failure counted (1 thread)", 6),
        ("adaptive throttle: may a retry go (1 thread)", 7),
    ] {
        println!("| {row} | {:.1} | |", ns(times[i]));
    }
    println!(
        "| token throttle: a failure counted (2 threads on one throttle) | {:.1} | |",
        ns(two)
    );
    println!(
        "| adaptive throttle: a failure counted (2 threads on one throttle) | {:.1} | |",
        ns(two_adaptive)
    );
    flooded(&orchestrator, &template);
}

/// The most scopes a `[throttles]` table may keep (`max_scopes`).
const MOST_SCOPES: usize = 100_000;

/// Decisions on one authority, one at a time, with and without a second thread naming a new
/// authority at every call (each a new scope, past the table's capacity of [`MOST_SCOPES`]
/// after a moment): the 50th and 99th percentile and the longest, printed as a table.
fn flooded(orchestrator: &Orchestrator, template: &Request) {
    let throttle = Arc::new(
        ScopedThrottle::new(
            tokens(),
            ThrottleScope::Authority,
            MOST_SCOPES,
            Instant::now(),
        )
        .unwrap(),
    );
    let unrelated = template.clone().with_authority("api.example");
    let sample = |count: usize| {
        let mut took: Vec<Duration> = (0..count)
            .map(|_| {
                let started = Instant::now();
                decide(orchestrator, &unrelated, Some(&throttle));
                started.elapsed()
            })
            .collect();
        took.sort();
        let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
        (at(0.5), at(0.99), took[took.len() - 1])
    };
    let quiet = sample(300_000);
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let (throttle, stop) = (Arc::clone(&throttle), Arc::clone(&stop));
        let template = template.clone();
        std::thread::spawn(move || {
            let mut named = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                let request = template
                    .clone()
                    .with_authority(format!("junk-{named}.example"));
                let now = Instant::now();
                throttle
                    .for_request(&request, now)
                    .failed_at(FailureClass::Other, now);
                named += 1;
            }
            named
        })
    };
    // Past the capacity before measuring: every new name evicts one.
    while throttle.forgotten().0 == 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let busy = sample(300_000);
    stop.store(true, Ordering::Relaxed);
    let named = flood.join().unwrap();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!();
    println!("| decisions on one authority, max_scopes {MOST_SCOPES} | p50 (µs) | p99 (µs) | longest (µs) |");
    println!("| --- | ---: | ---: | ---: |");
    for (row, (p50, p99, most)) in [
        ("alone", quiet),
        ("while another thread names new authorities", busy),
    ] {
        println!(
            "| {row} | {:.2} | {:.2} | {:.1} |",
            us(p50),
            us(p99),
            us(most)
        );
    }
    println!(
        "\n{named} authorities named; {} scopes evicted, {} held",
        throttle.forgotten().0,
        throttle.each().len() - 1
    );
}
