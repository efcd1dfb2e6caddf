//! A policy failing on every decision writes at most one failure line a
//! second, and the next line counts the ones left out. Alone in its binary: tracing caches
//! callsite interest process-wide, so a test running first without a subscriber would hide
//! these events.

mod common;
mod wasm_support;

use std::time::{Duration, Instant};

use common::{decide_at, logged_at, request};
use rebound::wasm::{QuarantineConfig, WasmStrategyConfig};
use rebound::{reasons, Orchestrator, RequestType};

#[test]
fn a_failing_policy_logs_at_most_one_line_a_second_and_counts_the_rest() {
    // No quarantine: every call reaches the policy and fails.
    let no_quarantine = QuarantineConfig::new(0, QuarantineConfig::default().cooldown_ms);
    let config = WasmStrategyConfig::default()
        .with_params([("always_panic", "yes")])
        .with_quarantine(no_quarantine);
    let orchestrator = Orchestrator::new(wasm_support::strategy("adversary", config));
    let decide = || {
        let mut req = request(RequestType::Get, 2500, Instant::now());
        decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 0)
    };
    let log = logged_at(tracing::Level::INFO, || {
        for _ in 0..50 {
            let _ = decide();
        }
        std::thread::sleep(Duration::from_millis(1100));
        let _ = decide();
    });
    // An event, not a line: the panic message spans lines.
    let lines: Vec<&str> = log
        .split(" WARN ")
        .filter(|event| event.contains("policy call failed"))
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].contains("suppressed=0"), "{log}");
    assert!(lines[1].contains("suppressed=49"), "{log}");
    assert!(
        lines[0].contains("adversary configured to panic on every call"),
        "{log}"
    );
}
