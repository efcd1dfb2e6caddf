//! What a per-node circuit breaker costs an attempt: asking it before the attempt and counting
//! the attempt's end (with the breaker the admission found, as the executor does, or looking
//! the node up), on one thread and with two threads on one node, measured in one run and
//! printed as a table.
//! Run: `env -u RUST_BACKTRACE cargo bench -p rebound-core --bench breaker`.

use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use rebound::breaker::{Admission, BreakerConfig, CircuitBreaker, NodeBreakers};

#[path = "support/measure.rs"]
mod measure;
use measure::{contended, measure_interleaved};

/// A breaker that never opens under the bench's outcomes: it needs a full window of failures,
/// and one attempt in 64 is an answer.
fn never_opens() -> BreakerConfig {
    let mut config = BreakerConfig::default();
    config.volume_threshold = BreakerConfig::MOST_VOLUME;
    config.error_percentage = 100;
    config
}

const NODE: &str = "node-1:11210";

fn main() {
    let now = Instant::now();
    let breakers = NodeBreakers::new(never_opens(), 1024).unwrap();
    for n in 0..100 {
        let _ = breakers.admit_at(&format!("node-{n}:11210"), now);
    }
    let in_hand = breakers.breaker(NODE, now).unwrap();
    let n = Cell::new(0u32);
    let mostly_failed = || {
        n.set(n.get().wrapping_add(1));
        !n.get().is_multiple_of(64)
    };
    let (rounds, iters) = (31, 500_000);
    let times = measure_interleaved(
        rounds,
        iters,
        &mut [
            &mut || {
                let _ = black_box(breakers.admit_at(black_box(NODE), now));
            },
            &mut || breakers.record_at(black_box(NODE), Admission::Admitted, false, now),
            &mut || breakers.record_at(black_box(NODE), Admission::Admitted, mostly_failed(), now),
            &mut || breakers.record_in(&in_hand, NODE, Admission::Admitted, mostly_failed(), now),
        ],
    );
    let shared = CircuitBreaker::new(never_opens(), now);
    let two = contended(2, 2_000_000, || {
        black_box(shared.record_at(Admission::Admitted, false, now));
    });
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    println!("| what | ns per call |");
    println!("| --- | ---: |");
    for (row, i) in [
        (
            "an attempt admitted by its node's breaker (1 thread, 100 nodes)",
            0,
        ),
        ("an answer counted, the node looked up (1 thread)", 1),
        ("a failure counted, the node looked up (1 thread)", 2),
        (
            "a failure counted in the breaker that admitted it (1 thread, the executor's path)",
            3,
        ),
    ] {
        println!("| {row} | {:.1} |", ns(times[i]));
    }
    println!(
        "| an answer counted, 2 threads on one breaker | {:.1} |",
        ns(two)
    );
}
