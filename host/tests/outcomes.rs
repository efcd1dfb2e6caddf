//! Issue 15, points 4 and 7: outcomes reach the host. The executor (and so the tower layer,
//! which runs on it) reports every request's end — success after N attempts, give-up, timeout —
//! to what decides, and a budget counts the requests that never failed. On tokio's paused
//! clock, so no test sleeps for real.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rebound::executor::{ExecuteError, Executor, Failure};
use rebound::{
    reasons, BudgetConfig, DecideError, Decider, Decision, DecisionContext, FailFast, Orchestrator,
    Outcome, Request, RequestType, TrafficBudget,
};

/// An orchestrator that records the outcomes reported to it (and passes them on).
#[derive(Default)]
struct Recording {
    orchestrator: Orchestrator,
    outcomes: Mutex<Vec<Outcome>>,
}

impl Decider for Recording {
    async fn decide(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Result<Decision, DecideError> {
        Ok(self.orchestrator.decide(request, context).await)
    }

    fn report(&self, request: &Request, outcome: Outcome, now: Instant) {
        self.outcomes.lock().unwrap().push(outcome);
        Decider::report(&self.orchestrator, request, outcome, now);
    }
}

fn get(timeout_ms: u64) -> Request {
    Request::new(1, RequestType::Get, Duration::from_millis(timeout_ms))
        .unwrap()
        .started_at(tokio::time::Instant::now().into_std())
}

/// Fails with a connection refused (retried by best effort) until attempt `succeeds_at`.
async fn run(executor: &Executor<Arc<Recording>>, request: Request, succeeds_at: Option<u32>) {
    let _ = executor
        .run(request, |attempt| async move {
            match succeeds_at {
                Some(n) if attempt.number() >= n => Ok(()),
                _ => Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE)),
            }
        })
        .await;
}

#[tokio::test(start_paused = true)]
async fn the_executor_reports_every_end() {
    let recording = Arc::new(Recording::default());
    let executor = Executor::new(Arc::clone(&recording));
    // Success at once, success after two retries, a timeout (never succeeds).
    run(&executor, get(1000), Some(0)).await;
    run(&executor, get(1000), Some(2)).await;
    run(&executor, get(100), None).await;
    // A give-up: fail fast answers no retry.
    let fail_fast = Arc::new(Recording {
        orchestrator: Orchestrator::new(Arc::new(FailFast)),
        ..Recording::default()
    });
    let result = Executor::new(Arc::clone(&fail_fast))
        .run(get(1000), |_| async {
            Err::<(), _>(Failure::reason("locked", reasons::KV_LOCKED))
        })
        .await;
    assert!(
        matches!(result, Err(ExecuteError::Ended { .. })),
        "{result:?}"
    );

    let outcomes = recording.outcomes.lock().unwrap().clone();
    assert_eq!(outcomes[0], Outcome::Succeeded { attempts: 1 });
    assert_eq!(outcomes[1], Outcome::Succeeded { attempts: 3 });
    assert!(
        matches!(outcomes[2], Outcome::TimedOut { attempts } if attempts > 1),
        "{outcomes:?}"
    );
    assert_eq!(outcomes.len(), 3);
    assert_eq!(
        *fail_fast.outcomes.lock().unwrap(),
        [Outcome::Failed { attempts: 1 }]
    );
}

/// Issue 15 point 3 with point 4: an orchestrator with a budget counts requests that
/// succeeded at once (reported by the executor) and requests that failed (at their first
/// decision) once each, and its retries draw from it.
#[tokio::test(start_paused = true)]
async fn a_budget_counts_each_request_once_and_pays_for_retries() {
    let budget = Arc::new(
        TrafficBudget::new(BudgetConfig {
            percent: 50.0,
            min_per_second: 0,
            ttl_ms: 60_000,
        })
        .unwrap(),
    );
    let recording = Arc::new(Recording {
        orchestrator: Orchestrator::default().with_budget(Arc::clone(&budget)),
        ..Recording::default()
    });
    let executor = Executor::new(Arc::clone(&recording));
    for _ in 0..4 {
        run(&executor, get(1000), Some(0)).await;
    }
    // Four requests deposited: 50 % is two retries. A request failing twice then succeeding
    // deposits once more (three requests' worth of share: 2.5 retries) and takes two.
    run(&executor, get(1000), Some(2)).await;
    let stats = budget.stats_at(tokio::time::Instant::now().into_std());
    assert_eq!(
        (stats.deposits, stats.withdrawals, stats.refusals),
        (5, 2, 0)
    );
    // The next one is refused its retry: the half-retry left is not enough.
    let result = executor
        .run(get(1000), |_| async {
            Err::<(), _>(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE))
        })
        .await;
    match result {
        Err(ExecuteError::Ended { error, .. }) => {
            assert!(
                error.to_string().contains("RETRY_BUDGET_EXHAUSTED"),
                "{error}"
            )
        }
        other => panic!("expected RETRY_BUDGET_EXHAUSTED, got {other:?}"),
    }
}
