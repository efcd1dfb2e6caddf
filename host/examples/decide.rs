//! Walks a few failures through the orchestrator and prints each decision: a rebalance
//! (NOT_MY_VBUCKET), a locked document, an upsert whose socket closed in flight, a read that
//! runs into its deadline, and a Cassandra read downgraded to the consistency still reachable;
//! then the same orchestrator with sandboxed WebAssembly policies: `no_retry_for_robots`
//! (reference 001 "Accessible Context") and a runaway policy stopped at its deadline.
//!
//! Run with `./scripts/demo.sh` (builds the policies first).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::cassandra::ConsistencyLevel;
use rebound::cassandra::{Cassandra, ConsistencyDowngradingRetryPolicy};
use rebound::classify::{classify, KvOpcode, Response};
use rebound::wasm::{PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig};
use rebound::Unavailable;
use rebound::{
    reasons, Decision, DecisionContext, Orchestrator, Request, RequestType, RetryReason,
};

fn show(what: &str, decision: &Decision) {
    let text = match decision {
        Decision::Retry(plan) => format!(
            "retry #{} after {:?} on the {:?} node{}",
            plan.attempt,
            plan.delay,
            plan.node,
            plan.consistency
                .map(|c| format!(" at {c}"))
                .unwrap_or_default()
        ),
        Decision::Timeout { after, error } => format!("{} in {after:?}", error.name()),
        Decision::Fail(error) => format!("{error}"),
        Decision::Ignore => "ignored".into(),
        Decision::AlreadyDone => "left alone".into(),
        other => format!("{other:?}"),
    };
    println!("{what:<48} → {text}");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let orchestrator = Orchestrator::default();
    let at = |req: &Request, ms| req.start() + Duration::from_millis(ms);
    let decide = |o: &Orchestrator, req: &mut Request, reason: &RetryReason, now| {
        futures::executor::block_on(o.decide(req, &DecisionContext::new(reason).at(now)))
    };

    let mut get = Request::new(1, RequestType::Get, Duration::from_millis(2500))?;
    let opcode = KvOpcode::of(RequestType::Get).ok_or("get has an opcode")?;
    for (ms, status) in [(0, 0x07), (3, 0x07), (20, 0x09)] {
        let class = classify(Response::Kv { opcode, status }, None);
        let reason = class.reason().ok_or("on the retry list")?;
        let now = at(&get, ms);
        show(
            &format!("get: status {status:#04x} ({reason})"),
            &decide(&orchestrator, &mut get, reason, now),
        );
    }

    let mut upsert = Request::new(2, RequestType::Upsert, Duration::from_millis(2500))?;
    upsert.mark_dispatched("10.0.0.1:11210");
    let now = at(&upsert, 40);
    show(
        "upsert: socket closed in flight",
        &decide(
            &orchestrator,
            &mut upsert,
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
            now,
        ),
    );

    let mut late =
        Request::new(3, RequestType::Get, Duration::from_millis(2500))?.with_retry_attempts(9);
    let now = at(&late, 2300);
    show(
        "get at 2.3 s of 2.5 s, 10th retry",
        &decide(&orchestrator, &mut late, &reasons::KV_LOCKED, now),
    );

    let cassandra = Orchestrator::new(Arc::new(Cassandra::new(ConsistencyDowngradingRetryPolicy)));
    let mut read = Request::new(4, RequestType::Cql, Duration::from_secs(2))?
        .with_idempotent(true)
        .with_consistency(ConsistencyLevel::Quorum);
    let reason = Unavailable {
        consistency: ConsistencyLevel::Quorum,
        required: 2,
        alive: 1,
    }
    .into();
    let now = Instant::now();
    show(
        "cql read: UNAVAILABLE 1 of 2 alive",
        &decide(&cassandra, &mut read, &reason, now),
    );

    println!("\nWebAssembly policies (build/guests/):");
    let guests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/guests");
    let runtime = WasmRuntime::new(64 << 20)?;
    let load = |name: &str| -> Result<Orchestrator, Box<dyn std::error::Error>> {
        let path = guests.join(format!("{name}.wasm"));
        let component = PolicyPre::load_file(&runtime, name, &path)?;
        println!("loaded {name} version {}", component.version());
        let config = WasmStrategyConfig::default();
        let strategy = WasmStrategy::new(component, config)?;
        Ok(Orchestrator::new(Arc::new(strategy)))
    };
    let robots = load("no_retry_for_robots")?;
    for (who, robot) in [("human", false), ("robot", true)] {
        let mut req = Request::new(5, RequestType::Get, Duration::from_secs(2))?;
        if robot {
            req = req.with_client_context("isRobotRequest", "true");
        }
        let now = at(&req, 5);
        let decision = decide(&robots, &mut req, &reasons::KV_LOCKED, now);
        show(
            &format!("no_retry_for_robots: {who} get, KV_LOCKED"),
            &decision,
        );
    }
    let runaway = load("adversary")?;
    let mut req =
        Request::new(6, RequestType::Get, Duration::from_secs(2))?.with_client_context("spin", "");
    let now = at(&req, 5);
    let decision = decide(&runaway, &mut req, &reasons::KV_LOCKED, now);
    show("adversary: policy loops forever", &decision);
    Ok(())
}
