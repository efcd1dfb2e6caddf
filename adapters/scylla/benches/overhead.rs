//! What the adapter adds to a decision: the driver's question answered by a
//! new session (error mapped to a reason, the request made, the verdict mapped back) beside the
//! registry asked directly for the same reason about a request built as a caller would build
//! it, in one run, with the built-in Cassandra default policy. Run: `env -u RUST_BACKTRACE cargo bench -p rebound-scylla --bench overhead`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use rebound::{DecisionContext, Request, RequestType, RetryReason, Unavailable};
use rebound_scylla::ReboundRetryPolicy;
use scylla::errors::{DbError, RequestAttemptError};
use scylla::statement::Consistency;

#[path = "../../../host/benches/support/builtin_registry.rs"]
mod builtin_registry;
#[path = "../../../host/benches/support/measure.rs"]
mod measure;
use builtin_registry::builtin_registry;
use measure::measure_interleaved;

fn main() {
    let registry = builtin_registry("cassandra-default");
    let policy = ReboundRetryPolicy::new(Arc::clone(&registry)).unwrap();
    let error = RequestAttemptError::DbError(
        DbError::Unavailable {
            consistency: Consistency::Quorum,
            required: 2,
            alive: 1,
        },
        String::new(),
    );
    let reason = RetryReason::from(Unavailable {
        consistency: rebound::cassandra::ConsistencyLevel::Quorum,
        required: 2,
        alive: 1,
    });
    let times = measure_interleaved(
        31,
        50_000,
        &mut [
            &mut || {
                // What a caller of the registry builds for a request: its id, start, timeout,
                // idempotence and consistency.
                let mut request = Request::new(1, RequestType::Cql, Duration::from_secs(30))
                    .unwrap()
                    .with_idempotent(true)
                    .with_consistency(rebound::cassandra::ConsistencyLevel::Quorum);
                let context = DecisionContext::new(&reason);
                let decided = registry.decide(&mut request, &context).now_or_never();
                let _ = black_box(decided.unwrap().unwrap());
            },
            &mut || {
                let mut session = policy.session();
                black_box(session.decide(&error, true, Consistency::Quorum));
            },
            &mut || {
                black_box(policy.session());
            },
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    println!("| first decision on UNAVAILABLE (1 thread) | ns | ratio |");
    println!("| --- | ---: | ---: |");
    println!("| registry asked directly | {:.0} | 1.00 |", ns(times[0]));
    println!(
        "| through the scylla adapter (a new session + the driver's question) | {:.0} | {:.2} |",
        ns(times[1]),
        ns(times[1]) / ns(times[0])
    );
    println!(
        "| a session of a request that succeeds (made and dropped, no question) | {:.0} | {:.2} |",
        ns(times[2]),
        ns(times[2]) / ns(times[0])
    );
}
