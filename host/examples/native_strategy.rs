//! A custom native strategy under the executor: reads are retried on the next node, up to three
//! times, 10 ms apart; everything else is left to the orchestrator's rules (a write that may
//! have been applied is never sent again, whatever a strategy answers). Each call here fails
//! with a closed connection until its fourth attempt.
//! Run: `cargo run -p rebound-core --example native_strategy`; `cargo test` runs it too.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rebound::executor::{Executor, Failure};
use rebound::{
    reasons, DecisionContext, NodeChoice, Orchestrator, Request, RequestType, RetryAction,
    Strategy, SyncStrategy,
};

/// Three retries for a read, each on the next node; none for anything else.
#[derive(Debug)]
struct ReadsOnTheNextNode;

impl Strategy for ReadsOnTheNextNode {
    fn name(&self) -> &str {
        "reads-on-the-next-node"
    }
}

impl SyncStrategy for ReadsOnTheNextNode {
    fn answer(&self, request: &Request, _context: &DecisionContext<'_>) -> RetryAction {
        if request.request_type() == RequestType::Get && request.retry_attempts() < 3 {
            RetryAction::RetryAfter {
                delay: Duration::from_millis(10),
                node: NodeChoice::Next,
                consistency: None,
                attempt_timeout: None,
            }
        } else {
            RetryAction::NoRetry
        }
    }
}

/// Runs a request of `request_type` whose attempts fail in flight until the fourth: its
/// outcome and the attempts made.
async fn run(request_type: RequestType) -> (Result<&'static str, String>, u32) {
    let orchestrator = Orchestrator::new(Arc::new(ReadsOnTheNextNode));
    let executor = Executor::new(Arc::new(orchestrator));
    let request = Request::new(1, request_type, Duration::from_secs(2)).expect("a timeout");
    let attempts = AtomicU32::new(0);
    let result = executor
        .run(request, |attempt| {
            let made = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                attempt.dispatched(format!("node-{}", attempt.number()));
                match made {
                    4 => Ok("the value"),
                    _ => Err(Failure::reason(
                        "connection closed",
                        reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
                    )),
                }
            }
        })
        .await
        .map_err(|error| error.to_string());
    (result, attempts.load(Ordering::SeqCst))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for request_type in [RequestType::Get, RequestType::Upsert] {
        let (result, attempts) = run(request_type).await;
        println!("{request_type:?}: {result:?} after {attempts} attempt(s)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference 001 "RetryReason": a read may be retried after a connection closed in flight;
    /// an upsert may have been applied, so the guard refuses its retry whatever the strategy
    /// says.
    #[tokio::test]
    async fn a_read_is_retried_on_the_next_node_and_a_write_is_not() {
        let (read, attempts) = run(RequestType::Get).await;
        assert_eq!((read, attempts), (Ok("the value"), 4));
        let (write, attempts) = run(RequestType::Upsert).await;
        assert!(write.is_err());
        assert_eq!(attempts, 1);
    }
}
