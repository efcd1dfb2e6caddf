//! A hedging case of `rebound test`: when a policy sends the next copy of a request in flight
//! depends on the latency its host observed, so the case states that latency (`observed`) and
//! the question is answered as `rebound eval` answers one (docs/decision-json.md "Hedging"),
//! by the component's `hedging` export under the host's rules, reading percentiles of a sketch
//! fed with the stated answers only: none before 64 of them, as the host reads none, and every
//! one of them after. Each case starts from nothing observed.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::hedge::{latency_key, Hedging};
use rebound::latency::{LatencySketches, REFRESH};
use rebound::Strategy;
use serde_json::Value;

use super::case::Case;
use crate::json_decider::JsonDecider;
use crate::wire::hedge::HedgeInput;

/// The answer of the component at `policy` to the hedging question of `case`.
pub fn answer(decider: &JsonDecider, policy: &Path, case: &Case) -> Result<Value, String> {
    let question = HedgeInput::parse(&case.input.to_string()).map_err(|e| e.to_string())?;
    let strategy = (decider.component(policy, case.params.clone())).map_err(|e| e.to_string())?;
    let now = Instant::now();
    let request = question.request(now).map_err(|e| e.to_string())?;
    let latencies = LatencySketches::new(1);
    for observed in &case.observed {
        for _ in 0..observed.count {
            let latency = Duration::from_millis(observed.latency_ms);
            latencies.record(latency_key(&request), latency);
        }
    }
    // As the host, no percentile before REFRESH answers; past it, every stated one counts.
    let stated: u64 = case.observed.iter().map(|o| u64::from(o.count)).sum();
    if stated >= u64::from(REFRESH) {
        latencies.refresh(latency_key(&request));
    }
    let hedging = (strategy.hedging())
        .map(|policy| Hedging::new(policy).with_latencies(Some(Arc::new(latencies))));
    (question.answer_with(&request, hedging, now)).map_err(|e| e.to_string())
}
