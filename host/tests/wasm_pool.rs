//! The instance pool: however many policies an engine loads, their idle
//! instances together hold at most half of its slots, so the calls in flight always find one.

use crate::wasm_support;

use std::sync::Arc;
use std::time::Duration;

use rebound::wasm::{
    Optimization, PolicyPre, PoolConfig, WasmRuntime, WasmStrategy, WasmStrategyConfig,
};
use rebound::{reasons, DecisionContext, Request, RequestType, RetryAction};
use rebound::{PolicyFailureKind, SyncStrategy};

/// An engine of 8 slots whose policies would each keep 16 idle instances (a many-core
/// default): 40 policies load and every one decides, from two threads at once, while the idle
/// instances never exceed 4.
#[test]
fn many_policies_never_exhaust_the_pool() {
    let pool = PoolConfig::new(8, 16);
    let runtime = WasmRuntime::with_pool(64 << 20, Optimization::None, pool).unwrap();
    let bytes = std::fs::read(wasm_support::guest("best_effort")).unwrap();
    let component = PolicyPre::load(&runtime, "best_effort", &bytes).unwrap();
    let policies: Vec<Arc<WasmStrategy>> = (0..40)
        .map(|_| {
            let config = WasmStrategyConfig::default();
            Arc::new(WasmStrategy::new(component.clone(), config).unwrap())
        })
        .collect();
    assert_eq!(
        runtime.idle_instances(),
        (4, 4),
        "half of the 8 slots, no more"
    );

    let request = Request::new(1, RequestType::Get, Duration::from_secs(60)).unwrap();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for round in 0..3 {
                    for (i, policy) in policies.iter().enumerate() {
                        let context = DecisionContext::new(&reasons::KV_LOCKED);
                        let action = policy.answer(&request, &context);
                        assert!(
                            !matches!(action, RetryAction::PolicyFailed(PolicyFailureKind::Trap)),
                            "policy {i}, round {round}: {action:?} ({:?})",
                            policy.stats().last_failure
                        );
                        assert!(action.is_retry(), "policy {i}: {action:?}");
                    }
                }
            });
        }
    });
    let (idle, limit) = runtime.idle_instances();
    assert!(
        idle <= limit && limit == 4,
        "{idle} idle of at most {limit}"
    );
}
